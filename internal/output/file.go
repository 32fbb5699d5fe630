// Package output writes what a command produces: to stdout, or to one file
// per format, each file written atomically and durably, with a fallback
// when a file cannot be written (Plan). WriteFile is the one atomic file
// writer of the program.
//
// It depends on nothing of meteorbench: a Plan is given the function that
// renders a format, so the server's helpers may use WriteFile too.
package output

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile writes data to path so that a reader sees the old file or the
// whole new one, never part of it, and the new one survives a crash once
// WriteFile returns: a temporary file in the same folder is written,
// flushed to disk (fsync), given mode perm and renamed over path, then the
// folder is flushed so the rename is on disk too. On any failure the
// temporary file is removed and path is left as it was.
//
// A process killed (SIGKILL, power loss) between creating the temporary
// file and the rename still leaves it behind: a hidden ".NAME.*.tmp" next
// to path. meteorbench catches SIGINT and SIGTERM, so only those leave one.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close() // a second Close after the first fails harmlessly
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("flush %s to disk: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir flushes a folder's entries to disk, so a rename in it is durable.
// A file system that cannot sync a folder (some refuse with EINVAL) does
// not fail the write: the data itself is on disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("flush folder %s to disk: %w", dir, err)
	}
	return nil
}

// PrepareDir makes sure a file can be written at path before any work is
// done: it creates the missing folders and tries a file there. flag names
// the option in the error ("--out").
func PrepareDir(flag, path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s %s: cannot create the folder: %w", flag, dir, err)
	}
	probe, err := os.CreateTemp(dir, ".meteorbench-probe-*")
	if err != nil {
		return fmt.Errorf("%s %s: cannot write there: %w", flag, dir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}
