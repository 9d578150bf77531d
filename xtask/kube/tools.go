//go:build tools

// The Kubernetes commands this module builds: the API server and the controller manager. Never
// compiled; it only pins them in go.mod.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
