// The k3s-io/helm-controller program for the peer benchmark
// (tests/benches/peer_helm_controller.rs), built from its module at the version go.mod pins.
// A module's package main cannot be imported, so this program runs helm-controller's own
// application (pkg/app: its flags, defaults, CRD creation, leader election and
// controllers) with the scheme registrations its program needs; nothing of the peer's
// behaviour is defined here.
package main

import (
	"context"
	"errors"
	"os"

	"github.com/k3s-io/helm-controller/pkg/app"
	_ "github.com/rancher/wrangler/v3/pkg/generated/controllers/apiextensions.k8s.io"
	_ "github.com/rancher/wrangler/v3/pkg/generated/controllers/networking.k8s.io"
	"github.com/rancher/wrangler/v3/pkg/signals"
	"github.com/sirupsen/logrus"
)

func main() {
	app := app.New()
	ctx := signals.SetupSignalContext()
	if err := app.RunContext(ctx, os.Args); err != nil && !errors.Is(err, context.Canceled) {
		logrus.Fatal(err)
	}
}
