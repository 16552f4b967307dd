// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 for the test control plane.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"go.etcd.io/etcd/server/v3/storage/wal"
)

// walSegmentBytes is the size each WAL segment file is preallocated to. etcd's 64 MB
// default, with the next segment made ahead of time, puts 128 MB on disk for every control
// plane before it holds a key; a test cluster writes a few MB, and the suite runs several
// control planes at once on machines whose /tmp may be small.
const walSegmentBytes = 8 * 1000 * 1000

func main() {
	wal.SegmentSizeBytes = walSegmentBytes
	etcdmain.Main(os.Args)
}
