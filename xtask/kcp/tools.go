//go:build tools

// The kcp commands this module builds: a shard (kcp), the front-proxy that routes to shards, and the
// cache server that shards share in a sharded setup. Never compiled; it only pins them in go.mod.
package tools

import (
	_ "github.com/kcp-dev/kcp/cmd/cache-server"
	_ "github.com/kcp-dev/kcp/cmd/kcp"
	_ "github.com/kcp-dev/kcp/cmd/kcp-front-proxy"
)
