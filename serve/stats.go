package serve

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Inference statistics per model version: the one home of the counters
// that the statistics extension (GET /v2/models/{m}[/versions/{v}]/stats,
// Triton's extension_statistics) answers and /metrics exports. They count
// from the server's start and outlive reloads, loads and unloads of the
// version, so they only grow, as Prometheus counters must.

// durationStat is the extension's $duration_stat: a count and a total
// duration in nanoseconds.
type durationStat struct {
	count, ns atomic.Uint64
}

func (d *durationStat) add(t time.Duration) {
	d.count.Add(1)
	d.ns.Add(uint64(max(t, 0)))
}

// inferStats are one model version's statistics.
type inferStats struct {
	name   string
	number int64
	// success and fail: whole requests, from their arrival to their
	// answer; queue: the wait for a classification slot; compute_input:
	// checking and preparing the inputs (image decoding included);
	// compute_infer: the model run and the ranking of the classes;
	// compute_output: building the output tensors.
	success, fail, queue, computeInput, computeInfer, computeOutput durationStat
	// inferences counts the images classified, executions the model runs.
	inferences, executions atomic.Uint64
	lastInference          atomic.Int64 // milliseconds since the epoch
}

// inferPhases are the durations of the phases one request went through
// (zero for those it did not reach), the images it classified and the
// model runs it took.
type inferPhases struct {
	slotted                     bool // got a classification slot
	queue, input, infer, output time.Duration
	images, runs                int
}

// record adds one request that took total, succeeded or failed, with its
// phases: queue once it got a slot, compute_input, compute_infer and
// compute_output, the counts and the time of the last inference once it
// succeeded (Triton counts the compute phases of successful requests).
func (st *inferStats) record(ph inferPhases, total time.Duration, ok bool) {
	if ph.slotted {
		st.queue.add(ph.queue)
	}
	if !ok {
		st.fail.add(total)
		return
	}
	st.success.add(total)
	st.computeInput.add(ph.input)
	st.computeInfer.add(ph.infer)
	st.computeOutput.add(ph.output)
	st.inferences.Add(uint64(ph.images))
	st.executions.Add(uint64(ph.runs))
	st.lastInference.Store(time.Now().UnixMilli())
}

// statsTable holds every version's statistics; safe for concurrent use.
type statsTable struct {
	mu    sync.Mutex
	byKey map[statsKey]*inferStats
}

type statsKey struct {
	name   string
	number int64
}

// stats returns the statistics of version number of model name, made on
// first use.
func (s *Server) stats(name string, number int64) *inferStats {
	t := &s.statistics
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byKey == nil {
		t.byKey = map[statsKey]*inferStats{}
	}
	k := statsKey{name, number}
	st := t.byKey[k]
	if st == nil {
		st = &inferStats{name: name, number: number}
		t.byKey[k] = st
	}
	return st
}

// durationJSON is the extension's $duration_stat.
type durationJSON struct {
	Count uint64 `json:"count"`
	NS    uint64 `json:"ns"`
}

func (d *durationStat) json() durationJSON { return durationJSON{d.count.Load(), d.ns.Load()} }

// modelStat is the extension's $model_stat. batch_stats is empty: bicyc
// runs each request as one batch and keeps no per-size statistics.
type modelStat struct {
	Name           string `json:"name"`
	Version        string `json:"version"`
	LastInference  int64  `json:"last_inference"`
	InferenceCount uint64 `json:"inference_count"`
	ExecutionCount uint64 `json:"execution_count"`
	InferenceStats struct {
		Success       durationJSON `json:"success"`
		Fail          durationJSON `json:"fail"`
		Queue         durationJSON `json:"queue"`
		ComputeInput  durationJSON `json:"compute_input"`
		ComputeInfer  durationJSON `json:"compute_infer"`
		ComputeOutput durationJSON `json:"compute_output"`
		CacheHit      durationJSON `json:"cache_hit"`
	} `json:"inference_stats"`
	BatchStats []struct{} `json:"batch_stats"`
}

func (st *inferStats) json() modelStat {
	m := modelStat{
		Name:           st.name,
		Version:        strconv.FormatInt(st.number, 10),
		LastInference:  st.lastInference.Load(),
		InferenceCount: st.inferences.Load(),
		ExecutionCount: st.executions.Load(),
		BatchStats:     []struct{}{},
	}
	is := &m.InferenceStats
	is.Success, is.Fail, is.Queue = st.success.json(), st.fail.json(), st.queue.json()
	is.ComputeInput, is.ComputeInfer, is.ComputeOutput = st.computeInput.json(), st.computeInfer.json(), st.computeOutput.json()
	return m
}

// oipModelStats returns the statistics of the versions a request names:
// every version served of every model (name ""), of one model (version
// ""), or one version. A model or version not served is an error (404).
func (s *Server) oipModelStats(name, version string) ([]modelStat, error) {
	cat := s.models.Load()
	var keys []statsKey
	switch {
	case name == "":
		for _, n := range cat.names() {
			for _, number := range (*cat)[n].numbers() {
				keys = append(keys, statsKey{n, number})
			}
		}
	case version == "":
		if _, err := cat.find(name, 0); err != nil {
			return nil, err
		}
		for _, number := range (*cat)[name].numbers() {
			keys = append(keys, statsKey{name, number})
		}
	default:
		v, err := s.oipFind(name, version)
		if err != nil {
			return nil, err
		}
		keys = append(keys, statsKey{name, v.number})
	}
	out := make([]modelStat, len(keys))
	for i, k := range keys {
		out[i] = s.stats(k.name, k.number).json()
	}
	return out, nil
}

// statsCollector exports the statistics to Prometheus.
type statsCollector struct{ s *Server }

var (
	statsRequestsDesc = prometheus.NewDesc("bicyc_infer_inference_requests_total",
		"Open Inference Protocol inference requests that reached a served model version, by result: success or fail (the statistics extension's success and fail counts).",
		[]string{"model", "version", "result"}, nil)
	statsSecondsDesc = prometheus.NewDesc("bicyc_infer_inference_seconds_total",
		"Cumulative time of inference requests by phase: success and fail (whole requests), queue (waiting for a classification slot), compute_input (preparing the inputs), compute_infer (the model run), compute_output (building the outputs); the statistics extension's ns.",
		[]string{"model", "version", "phase"}, nil)
	statsImagesDesc = prometheus.NewDesc("bicyc_infer_inference_images_total",
		"Images classified through the Open Inference Protocol (the statistics extension's inference_count).",
		[]string{"model", "version"}, nil)
	statsExecutionsDesc = prometheus.NewDesc("bicyc_infer_inference_executions_total",
		"Model runs of Open Inference Protocol requests, one per request of up to 64 images (the statistics extension's execution_count).",
		[]string{"model", "version"}, nil)
)

func (c statsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- statsRequestsDesc
	ch <- statsSecondsDesc
	ch <- statsImagesDesc
	ch <- statsExecutionsDesc
}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	t := &c.s.statistics
	t.mu.Lock()
	all := make([]*inferStats, 0, len(t.byKey))
	for _, st := range t.byKey {
		all = append(all, st)
	}
	t.mu.Unlock()
	for _, st := range all {
		v := strconv.FormatInt(st.number, 10)
		counter := func(d *prometheus.Desc, x uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(x), append([]string{st.name, v}, labels...)...)
		}
		counter(statsRequestsDesc, st.success.count.Load(), "success")
		counter(statsRequestsDesc, st.fail.count.Load(), "fail")
		for _, p := range []struct {
			phase string
			d     *durationStat
		}{{"success", &st.success}, {"fail", &st.fail}, {"queue", &st.queue}, {"compute_input", &st.computeInput}, {"compute_infer", &st.computeInfer}, {"compute_output", &st.computeOutput}} {
			ch <- prometheus.MustNewConstMetric(statsSecondsDesc, prometheus.CounterValue, float64(p.d.ns.Load())/1e9, st.name, v, p.phase)
		}
		counter(statsImagesDesc, st.inferences.Load())
		counter(statsExecutionsDesc, st.executions.Load())
	}
}
