package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gantry/tests/e2e/driver/harness"
)

// The reflectjoborder plugin and the plugin server (KAI's, on 127.0.0.1:--plugin-server-port):
// with the plugin configured, GET /get-job-order on the live scheduler answers the order in which
// allocate tries the pending jobs, as KAI's JSON.

const jobOrderSchedulerConfig = `actions: allocate
tiers:
- plugins:
  - name: predicates
  - name: proportion
  - name: priority
  - name: reflectjoborder
`

var pluginServerPort = regexp.MustCompile(`plugin server on 127\.0\.0\.1:(\d+) \(([^)]*)\)`)

type jobOrderEntry struct {
	ID       string `json:"id"`
	Priority int32  `json:"priority"`
}

type jobOrder struct {
	GlobalOrder []jobOrderEntry            `json:"global_order"`
	QueueOrder  map[string][]jobOrderEntry `json:"queue_order"`
}

func TestLiveSchedulerServesJobOrder(t *testing.T) {
	ctx := ctxFor(t)
	id := suffix()
	exclusiveNodes(t, ctx, harness.GPUNode{Name: "order-" + id, GPUs: 2})
	ns := newNamespace(t, ctx, "sched-order")
	cleanupPods(t, ns)
	queue := "order-" + id
	createQueue(t, ctx, queue, 0)
	cfg := filepath.Join(t.TempDir(), "scheduler.yaml")
	writeFile(t, cfg, jobOrderSchedulerConfig)
	sched := startScheduler(t, "--config", cfg)

	// startScheduler asks for a free port; the log line names it and the plugins' paths.
	var port int
	if err := harness.Poll(ctx, 30*time.Second, "the plugin server's log line", func(context.Context) (bool, error) {
		m := pluginServerPort.FindStringSubmatch(sched.output())
		if m == nil {
			return false, nil
		}
		port, _ = strconv.Atoi(m[1])
		if m[2] != "/get-job-order" {
			return false, fmt.Errorf("plugin paths %q, want /get-job-order", m[2])
		}
		return true, nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, sched.output())
	}

	// Two gangs that do not fit (4 GPUs each, the node has 2): pending every cycle.
	createGang(t, ctx, ns, "big-a", queue, 2, 2, 2)
	createGang(t, ctx, ns, "big-b", queue, 2, 2, 2)

	var order jobOrder
	var last string
	err := harness.Poll(ctx, 60*time.Second, "both gangs in /get-job-order", func(context.Context) (bool, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/get-job-order", port))
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, err
		}
		last = fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		if resp.StatusCode != http.StatusOK {
			return false, nil // 503 until the first cycle
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			return false, fmt.Errorf("Content-Type %q", ct)
		}
		order = jobOrder{}
		if err := json.Unmarshal(body, &order); err != nil {
			return false, err
		}
		return len(order.QueueOrder[queue]) == 2, nil
	})
	if err != nil {
		t.Fatalf("%v; last answer: %s", err, last)
	}
	var ids []string
	for _, e := range order.QueueOrder[queue] {
		ids = append(ids, e.ID)
	}
	sort.Strings(ids)
	if strings.Join(ids, ",") != "big-a,big-b" {
		t.Errorf("queue %s order %v, want the PodGroups big-a and big-b", queue, ids)
	}
	// The queue's jobs appear in the global order in the same relative order.
	var global []string
	for _, e := range order.GlobalOrder {
		if e.ID == "big-a" || e.ID == "big-b" {
			global = append(global, e.ID)
		}
	}
	if len(global) != 2 || global[0] != order.QueueOrder[queue][0].ID {
		t.Errorf("global order %v, queue order %v", order.GlobalOrder, order.QueueOrder[queue])
	}
	// KAI's encoding: two-space indentation and a final newline.
	if !strings.HasPrefix(last, "200 application/json {\n  \"global_order\": [") || !strings.HasSuffix(last, "}\n") {
		t.Errorf("answer not in KAI's encoding: %q", last)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/get-snapshot", port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/get-snapshot: status %d, want 404 (no plugin serves it)", resp.StatusCode)
	}
}
