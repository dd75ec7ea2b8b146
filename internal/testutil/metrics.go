package testutil

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MetricsConfig is the ExtraConfig of a daemon that serves /metrics on a
// port of its choosing, which MetricsURL finds.
const MetricsConfig = "[metrics]\naddress = \"127.0.0.1:0\"\n"

// MetricsURL is the /metrics URL of a daemon started with MetricsConfig,
// read from where its log says it serves.
func (d *Daemon) MetricsURL(t testing.TB) string {
	t.Helper()
	m := regexp.MustCompile(`msg="metrics are served" address=(\S+)`).FindStringSubmatch(d.ReadLog())
	if m == nil {
		t.Fatalf("the daemon logged no metrics address:\n%s", d.ReadLog())
	}
	return "http://" + m[1] + "/metrics"
}

// MetricsOnFreePort is the ExtraConfig of a daemon that serves /metrics
// on a free loopback port chosen here, and their URL: for daemons that log
// only warnings, whose log does not say where they serve (MetricsURL).
func MetricsOnFreePort(t testing.TB) (config, url string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return fmt.Sprintf("[metrics]\naddress = %q\n", addr), "http://" + addr + "/metrics"
}

// Scrape GETs a Prometheus text exposition and parses it.
func Scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}
