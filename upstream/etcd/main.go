// Command etcd is the etcd server of go.etcd.io/etcd/server/v3, built from its module.
//
// `go install go.etcd.io/etcd/server/v3@vX` is refused because server/go.mod has relative
// replace directives (etcd-io/etcd#18501); this wrapper main is etcd's own server/main.go.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
