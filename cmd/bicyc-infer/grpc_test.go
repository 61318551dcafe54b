package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/servetest"
)

// stockTool returns the tool that scripts/setup.sh installs (into
// $BICYC_TOOLS/bin, by default the repository's .tools/bin), or one on
// PATH. The test fails without it rather than skip: make test runs the
// setup first.
func stockTool(t *testing.T, name string) string {
	t.Helper()
	tools := os.Getenv("BICYC_TOOLS")
	if tools == "" {
		tools = filepath.Join("..", "..", ".tools")
	}
	if p, err := filepath.Abs(filepath.Join(tools, "bin", name)); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Fatalf("%s not found in %s/bin or on PATH: run scripts/setup.sh (make test does)", name, tools)
	return ""
}

// callGRPC runs grpcurl against addr with the JSON request body (none
// when empty) and returns its output.
func callGRPC(t *testing.T, bin, addr, method, body string) string {
	t.Helper()
	args := []string{"-plaintext", "-max-time", "30"}
	if body != "" {
		args = append(args, "-d", "@")
	}
	cmd := exec.Command(bin, append(args, addr, method)...)
	cmd.Stdin = strings.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("grpcurl %s: %v\n%s", method, err, stderr.String())
	}
	return string(out)
}

// TestGRPCurl serves the test model with the serve command and calls it
// with grpcurl, a stock gRPC client that knows nothing of bicyc: it
// lists the services through server reflection, checks the standard
// health service (and so does grpc-health-probe, as a Kubernetes setup
// would), and calls ModelInfer on a real image, sent as the
// protocol's BYTES input with the image file's bytes. The answers must
// equal `bicyc-infer --json` on the same file: the distance of every
// class (matched by the classification extension's labels) within 1e-5
// relative, the unknown score and the unknown flag.
func TestGRPCurl(t *testing.T) {
	bin, probe := stockTool(t, "grpcurl"), stockTool(t, "grpc-health-probe")
	model, test := testModel(t)
	file := filepath.Join(t.TempDir(), "shirt.png")
	if err := os.WriteFile(file, encodePNG(t, fashionImage(test, 7)), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runCommand(t, nil, "--model", model, "--provider", "cpu", "--json", "--top-k", "100", file)
	if err != nil {
		t.Fatalf("bicyc-infer --json: %v\n%s", err, stderr)
	}
	var want infer.Result
	if err := json.Unmarshal([]byte(stdout), &want); err != nil {
		t.Fatalf("bicyc-infer --json: %v\n%s", err, stdout)
	}

	var log servetest.SyncBuffer
	o := &serveOptions{model: &modelOptions{model: model, provider: "cpu", threads: 1, maxPixels: infer.DefaultMaxPixels},
		addr: "127.0.0.1:0", grpcAddr: "127.0.0.1:0", modelName: "bicyc",
		maxBody: 1 << 20, maxBuffered: 4 << 20, maxConcurrent: 2, queueTimeout: time.Second, bodyTimeout: 5 * time.Second,
		readTimeout: 10 * time.Second, writeTimeout: 10 * time.Second, shutdownTimeout: 5 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- runServe(ctx, o, &log) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("runServe: %v", err)
		}
	}()
	grpcLine := regexp.MustCompile(`gRPC inference.GRPCInferenceService on (127\.0\.0\.1:\d+)\n`)
	waitLog(t, &log, grpcLine.MatchString)
	addr := grpcLine.FindStringSubmatch(log.String())[1]

	checkGRPCHealthTools(t, bin, probe, addr)

	image, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	k := len(want.Predictions)
	request := func(outputs string) string {
		return `{"model_name": "bicyc", "id": "grpcurl-1", "inputs": [{"name": "image", "datatype": "BYTES", "shape": [1],
			"contents": {"bytes_contents": ["` + base64.StdEncoding.EncodeToString(image) + `"]}}], "outputs": ` + outputs + `}`
	}
	var scores, labels grpcurlAnswer
	out := callGRPC(t, bin, addr, "inference.GRPCInferenceService/ModelInfer",
		request(`[{"name": "distance"}, {"name": "unknown_score"}, {"name": "unknown"}]`))
	if err := json.Unmarshal([]byte(out), &scores); err != nil || len(scores.Outputs) != 3 {
		t.Fatalf("ModelInfer: %v\n%s", err, out)
	}
	out = callGRPC(t, bin, addr, "inference.GRPCInferenceService/ModelInfer",
		request(`[{"name": "distance", "parameters": {"classification": {"int64_param": `+strconv.Itoa(k)+`}}}]`))
	if err := json.Unmarshal([]byte(out), &labels); err != nil || len(labels.Outputs) != 1 || len(labels.Outputs[0].Contents.BytesContents) != k {
		t.Fatalf("ModelInfer with classification: %v\n%s", err, out)
	}
	if scores.ModelName != "bicyc" || scores.ModelVersion != "1" || scores.ID != "grpcurl-1" {
		t.Errorf("ModelInfer: model %q version %q id %q", scores.ModelName, scores.ModelVersion, scores.ID)
	}

	checkGRPCurlAnswer(t, want, scores, labels)
}

// checkGRPCHealthTools asks the gRPC server at addr for its services
// (grpcurl at bin) and its health (grpc-health-probe at probe).
func checkGRPCHealthTools(t *testing.T, bin, probe, addr string) {
	if got := callGRPC(t, bin, addr, "list", ""); !strings.Contains(got, "inference.GRPCInferenceService") || !strings.Contains(got, "grpc.health.v1.Health") {
		t.Errorf("grpcurl list: %q", got)
	}
	if got := callGRPC(t, bin, addr, "grpc.health.v1.Health/Check", ""); !regexp.MustCompile(`"status":\s*"SERVING"`).MatchString(got) {
		t.Errorf("health: %q, want SERVING", got)
	}
	for _, service := range []string{"", "live"} {
		out, err := exec.Command(probe, "-addr", addr, "-service", service).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SERVING") {
			t.Errorf("grpc-health-probe -service %q: %v %s", service, err, out)
		}
	}
	if out, err := exec.Command(probe, "-addr", addr, "-service", "other").CombinedOutput(); err == nil {
		t.Errorf("grpc-health-probe of an unknown service succeeded: %s", out)
	}
}

// grpcurlAnswer is a ModelInfer response as grpcurl prints it: protobuf's
// JSON mapping, with camelCase names, int64 as strings, bytes as base64.
type grpcurlAnswer struct {
	ModelName, ModelVersion, ID string
	Outputs                     []struct {
		Name, Datatype string
		Shape          []string
		Contents       struct {
			Fp32Contents  []float64
			BoolContents  []bool
			BytesContents [][]byte
		}
	}
}

// checkGRPCurlAnswer compares ModelInfer's answers over grpcurl, all the
// scores and the classification labels of every class, with want,
// bicyc-infer --json's answer for the same image.
func checkGRPCurlAnswer(t *testing.T, want infer.Result, scores, labels grpcurlAnswer) {
	k := len(want.Predictions)
	distance := scores.Outputs[0]
	if distance.Name != "distance" || distance.Datatype != "FP32" || strings.Join(distance.Shape, ",") != "1,"+strconv.Itoa(k) || len(distance.Contents.Fp32Contents) != k {
		t.Fatalf("distance output: %+v", distance)
	}
	byName := map[string]float32{}
	for _, p := range want.Predictions {
		byName[p.Name] = p.Distance
	}
	for _, l := range labels.Outputs[0].Contents.BytesContents {
		// "value:index:label", Triton's classification extension.
		parts := strings.SplitN(string(l), ":", 3)
		col, err := strconv.Atoi(parts[1])
		wantD, ok := byName[parts[2]]
		if len(parts) != 3 || err != nil || !ok || col < 0 || col >= k {
			t.Fatalf("classification label %q: want value:index:label of a class bicyc-infer names", l)
		}
		got := distance.Contents.Fp32Contents[col]
		if math.Abs(got-float64(wantD)) > 1e-5*math.Abs(float64(wantD)) {
			t.Errorf("class %s (column %d): distance %v over gRPC, %v from bicyc-infer --json", parts[2], col, got, wantD)
		}
		delete(byName, parts[2])
	}
	if len(byName) != 0 {
		t.Errorf("classes bicyc-infer names but the classification output does not: %v", byName)
	}
	if got := scores.Outputs[1].Contents.Fp32Contents; len(got) != 1 || math.Abs(got[0]-want.UnknownScore) > 1e-5*math.Abs(want.UnknownScore) {
		t.Errorf("unknown_score %v, bicyc-infer --json %v", got, want.UnknownScore)
	}
	if got := scores.Outputs[2].Contents.BoolContents; len(got) != 1 || got[0] != want.Unknown {
		t.Errorf("unknown %v, bicyc-infer --json %v", got, want.Unknown)
	}
}
