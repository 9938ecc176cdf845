// The node suite's cluster DNS: CoreDNS at the version go.mod pins, with only the plugins the suite's Corefile uses
// (CoreDNS's own main links every plugin; choosing the directives here is its documented compile-time selection).
// No forward or proxy plugin is linked, so no name outside cluster.local can be sent anywhere.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
)

func init() {
	// The order in which the plugins handle a query, as CoreDNS's plugin.cfg orders them.
	dnsserver.Directives = []string{"bind", "errors", "log", "kubernetes"}
}

func main() {
	coremain.Run()
}
