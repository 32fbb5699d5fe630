// Package dockertest builds the meteorbench image without a registry and runs
// it for real: both protocols on the published port, a non-root process, the
// HEALTHCHECK following the address, a clean drain on docker stop, the
// compose file of deploy/compose with one load generator killed mid-run,
// and deploy/swarm's stack on a one-node Docker Swarm (made for the test
// when the engine is in none), with one generator task killed.
//
// Everything is in its tests; they skip, saying why, where no Docker engine
// answers. The image is built from the real Dockerfile's runtime stage
// around a binary the test builds itself (CGO_ENABLED=0 go build), on a base
// imported with docker import from a root file system the test writes: no
// image is ever pulled.
package dockertest
