//go:build pin

// Package pin only pins the sigs.k8s.io/gateway-api module: ../build.sh copies its standard
// CRDs (config/crd/standard) into the manifests cache. Nothing here is ever compiled.
package pin

import _ "sigs.k8s.io/gateway-api/apis/v1"
