// Package kubernetes holds no code: it is the module of the test that decodes
// the manifests in this directory strictly into the k8s.io/api types and
// checks their wiring. A module of its own, so k8s.io/api and its
// dependencies stay out of meteorbench's go.mod.
package kubernetes
