// etcd's server command from its published module (etcd's own main lives in a module that is not published).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
