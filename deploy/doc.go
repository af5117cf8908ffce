// Package deploy holds no code: its tests check the deployment artifacts of
// this folder (the container image recipe, the compose file, the Kubernetes
// manifests, the alert rules and the dashboard) against the server they
// deploy. It is a module of its own so that the Kubernetes API types it
// decodes the manifests into stay out of the server's dependencies.
package deploy
