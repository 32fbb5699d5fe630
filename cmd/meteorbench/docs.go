package main

import (
	"errors"

	"github.com/meteorbench/meteorbench/internal/job"
)

// docError makes a bad input document of report, compare or merge
// (job.BadDocumentError) a usage error: exit status 2.
func docError(err error) error {
	var bad *job.BadDocumentError
	if errors.As(err, &bad) {
		return usageError{err}
	}
	return err
}
