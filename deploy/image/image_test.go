package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/serve"
)

// make test-image passes the archive that make image wrote and the
// arguments it was built with, to check it byte for byte and run it.
var (
	imageFlag = flag.String("image", "", "image archive to load and run with podman (make test-image)")
	refFlag   = flag.String("ref", "localhost/bicyc:dev", "the reference the archive was built as")
	binFlag   = flag.String("bin", "", "the binaries directory it was built from (rebuilt and compared)")
	epochFlag = flag.String("epoch", "", "the --epoch it was built with")
)

// TestImageReproducible builds the image again from the same inputs and
// requires the same bytes.
func TestImageReproducible(t *testing.T) {
	if *imageFlag == "" || *binFlag == "" {
		t.Skip("needs -image and -bin (make test-image)")
	}
	again := filepath.Join(t.TempDir(), "again.tar")
	if err := run(*binFlag, filepath.Dir(infer.InstalledLibraryPath), "", "/usr/share/datasets/fashion-mnist",
		"/etc/ssl/certs/ca-certificates.crt", *refFlag, revision(t), again, *epochFlag); err != nil {
		t.Fatal(err)
	}
	if a, b := fileSum(t, *imageFlag), fileSum(t, again); a != b {
		t.Fatalf("same inputs, different images: %s has sha256 %s, the rebuild %s", *imageFlag, a, b)
	}
}

// TestImageGPU builds the image with a GPU directory as make setup-gpu
// lays it out (the core and its providers; here small stand-ins under
// their names: the 179 MB providers are not installed by the test's
// set-up, and no GPU runs here) and loads it into podman: the -gpu reference has one more layer
// with the directory at /usr/local/lib/bicyc/gpu, and BICYC_ORT_LIB
// points at it; the CPU reference is unchanged.
func TestImageGPU(t *testing.T) {
	if *imageFlag == "" || *binFlag == "" {
		t.Skip("needs -image and -bin (make test-image)")
	}
	gpu := t.TempDir()
	core, err := filepath.EvalSymlinks(infer.InstalledLibraryPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(core), filepath.Join(gpu, "libonnxruntime.so")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gpu, "libonnxruntime_providers_cuda.so"), []byte("stand-in"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gpu, filepath.Base(core)), []byte("stand-in"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := "localhost/bicyc-gpu-test:1"
	archive := filepath.Join(t.TempDir(), "gpu.tar")
	if err := run(*binFlag, filepath.Dir(infer.InstalledLibraryPath), gpu, "/usr/share/datasets/fashion-mnist",
		"/etc/ssl/certs/ca-certificates.crt", ref, "", archive, *epochFlag); err != nil {
		t.Fatal(err)
	}
	out := podman(t, "load", "-i", archive)
	t.Cleanup(func() { exec.Command("podman", "rmi", "-f", ref, ref+"-gpu").Run() })
	if !strings.Contains(out, ref+"-gpu") || !strings.Contains(out, ref+"\n") {
		t.Fatalf("podman load did not load %s and %s-gpu:\n%s", ref, ref, out)
	}
	layers := func(r string) int {
		return len(strings.Fields(podman(t, "image", "inspect", "--format", "{{range .RootFS.Layers}}{{.}} {{end}}", r)))
	}
	if cpu, gpu := layers(ref), layers(ref+"-gpu"); cpu != 3 || gpu != 4 {
		t.Errorf("layers: %d in %s, %d in %s-gpu; want 3 and 4", cpu, ref, gpu, ref)
	}
	env := podman(t, "image", "inspect", "--format", "{{range .Config.Env}}{{.}} {{end}}", ref+"-gpu")
	if !strings.Contains(env, "BICYC_ORT_LIB=/usr/local/lib/bicyc/gpu/libonnxruntime.so") {
		t.Errorf("%s-gpu environment: %s", ref, env)
	}
	listing := podman(t, append([]string{"run", "--rm"}, containerFlags(ref+"-gpu", "bicyc-infer", "doctor", "--help")...)...)
	if !strings.Contains(listing, "doctor") {
		t.Errorf("bicyc-infer in %s-gpu: %s", ref, listing)
	}
}

// TestImageRuns loads the image into podman, trains a small quick run
// inside it as its non-root user, serves the exported model from it with
// bicyc-infer, and requires the served distances of real images to equal
// those ONNX Runtime gives on this machine for the same model, bit for bit.
func TestImageRuns(t *testing.T) {
	if *imageFlag == "" {
		t.Skip("needs -image (make test-image)")
	}
	checkDocsLoadImage(t)
	out := podman(t, "load", "-i", *imageFlag)
	if !strings.Contains(out, *refFlag) {
		t.Fatalf("podman load did not load %s:\n%s", *refFlag, out)
	}
	if user := strings.TrimSpace(podman(t, "image", "inspect", "--format", "{{.Config.User}}", *refFlag)); user != "10001:10001" {
		t.Fatalf("image user %q, want the non-root 10001:10001", user)
	}
	model := trainInContainer(t)
	base := serveFromContainer(t, model)
	images := exifImages(t)
	served := serveDistances(t, base, images)
	local := localResults(t, model, images)
	for i, r := range local {
		for _, p := range r.Predictions {
			if got := served[i][p.ClassID]; got != p.Distance {
				t.Errorf("%s, class %d: served from the image %v, on this machine %v", images[i], p.ClassID, got, p.Distance)
			}
		}
	}
}

// checkDocsLoadImage: docs/cluster.md's commands name the file and
// reference make image writes by default, as TestImageRuns loads them.
func checkDocsLoadImage(t *testing.T) {
	t.Helper()
	md, err := os.ReadFile("../../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(*imageFlag, "/build/image/bicyc.tar") || *refFlag != "localhost/bicyc:dev" ||
		!strings.Contains(string(md), "\npodman load -i build/image/bicyc.tar ") || !strings.Contains(string(md), "`localhost/bicyc:dev`") {
		t.Errorf("docs/cluster.md does not load %s as %s", *imageFlag, *refFlag)
	}
}

// trainInContainer trains a small quick run inside the image and returns
// its model directory on this machine.
func trainInContainer(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	if err := os.Chmod(work, 0o777); err != nil { // the container's user writes the run there
		t.Fatal(err)
	}
	mount := work + ":/work"
	start := time.Now()
	log := podman(t, append([]string{"run", "--rm", "-v", mount}, containerFlags(*refFlag,
		"bicyc", "train", "--quick", "--set", "stream.tasks=2", "--set", "quick_profile.train_per_class=60",
		"--set", "quick_profile.test_per_class=30", "--set", "quick_profile.transport_samples=100",
		"--set", "model.hidden_mult=4", "--set", "quick_profile.rotation=false",
		"--run-dir", "/work/runs", "--name", "m")...)...)
	t.Logf("trained in the container in %s", time.Since(start).Round(time.Second))
	if !strings.Contains(log, "task 2 done") {
		t.Fatalf("training in the container did not finish its second task:\n%s", log)
	}
	return filepath.Join(work, "runs", "m", "model")
}

// serveFromContainer serves model from the image and returns the server's
// base URL once it is ready and its gRPC health answers.
func serveFromContainer(t *testing.T, model string) string {
	t.Helper()
	// The server runs as KServe would start it: the ClusterServingRuntime's
	// command and arguments, the model mounted where KServe's storage
	// initializer puts it, only the ports moved to free ones on this host.
	port, grpcPort := freePort(t), freePort(t)
	name := fmt.Sprintf("bicyc-image-test-%d", os.Getpid())
	podman(t, append([]string{"run", "-d", "--name", name, "--network", "host", "-v", model + ":/mnt/models:ro"},
		containerFlags(*refFlag, runtimeCommand(t, serve.DefaultModelName, port, grpcPort)...)...)...)
	t.Cleanup(func() { exec.Command("podman", "rm", "-f", name).Run() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitReady(t, base+"/v2/health/ready", name)
	probe := filepath.Join("..", "..", ".tools", "bin", "grpc-health-probe")
	if out, err := exec.Command(probe, "-addr", fmt.Sprintf("127.0.0.1:%d", grpcPort)).CombinedOutput(); err != nil {
		t.Errorf("gRPC health of the served image (%s, installed by scripts/setup.sh): %v\n%s", probe, err, out)
	}
	return base
}

// exifImages are the decoder tests' EXIF-oriented images.
func exifImages(t *testing.T) []string {
	t.Helper()
	var images []string
	all, _ := filepath.Glob("../../imaging/testdata/exif/*")
	for _, p := range all {
		if imaging.IsImageFile(p) {
			images = append(images, p)
		}
	}
	if len(images) < 5 {
		t.Fatalf("test images: found %d in imaging/testdata/exif", len(images))
	}
	return images
}

// localResults classifies images with model on this machine.
func localResults(t *testing.T, model string, images []string) []infer.Result {
	t.Helper()
	c, err := infer.Open(context.Background(), model)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var inputs []infer.Input
	for _, p := range images {
		in, err := c.PrepareFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, in)
	}
	results, err := c.ClassifyInputs(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// runtimeCommand is the command of deploy/kserve/clusterservingruntime.yaml's
// container with the InferenceService name filled in and the listeners
// moved to ports free on this host (the test shares the host's network).
func runtimeCommand(t *testing.T, model string, port, grpcPort int) []string {
	t.Helper()
	b, err := os.ReadFile("../kserve/clusterservingruntime.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rt struct {
		Spec struct {
			Containers []struct {
				Command []string `yaml:"command"`
				Args    []string `yaml:"args"`
			} `yaml:"containers"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &rt); err != nil || len(rt.Spec.Containers) != 1 {
		t.Fatalf("clusterservingruntime.yaml: %v (%d containers, want 1)", err, len(rt.Spec.Containers))
	}
	c := rt.Spec.Containers[0]
	moved := map[string]string{
		"--addr=:8080":      fmt.Sprintf("--addr=127.0.0.1:%d", port),
		"--grpc-addr=:8001": fmt.Sprintf("--grpc-addr=127.0.0.1:%d", grpcPort),
	}
	var cmd []string
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		a = strings.ReplaceAll(a, "{{.Name}}", model)
		if m, ok := moved[a]; ok {
			delete(moved, a)
			a = m
		}
		cmd = append(cmd, a)
	}
	if len(moved) > 0 {
		t.Fatalf("the runtime's arguments %q lack %v", cmd, moved)
	}
	// The admin listeners stay on their loopback defaults in a pod; here
	// they would collide with the host's.
	return append(cmd, "--admin-addr=", "--grpc-admin-addr=")
}

// containerFlags are the arguments of podman run before and after the
// image: process limits this machine allows, then the image and the
// command. podman's defaults raise the limits, which needs
// CAP_SYS_RESOURCE; the open files stay at this process's limits, the
// processes at 4096 (runc refuses this machine's own nproc limit too).
func containerFlags(ref string, command ...string) []string {
	var r unix.Rlimit
	var flags []string
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &r) == nil {
		flags = append(flags, "--ulimit", fmt.Sprintf("nofile=%d:%d", r.Cur, r.Max))
	}
	flags = append(flags, "--ulimit", "nproc=4096:4096")
	return append(append(flags, ref), command...)
}

// podman runs podman with runc (crun refuses this machine's mixed cgroup
// v1/v2 hierarchy; scripts/setup-image.sh installs both).
func podman(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("podman", append([]string{"--runtime", "runc"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func waitReady(t *testing.T, url, container string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	logs, _ := exec.Command("podman", "logs", container).CombinedOutput()
	t.Fatalf("%s not ready after 60 s; container log:\n%s", url, logs)
}

// serveDistances asks the server for the distances of images in one Open
// Inference Protocol request and returns them by image and class id.
func serveDistances(t *testing.T, base string, images []string) []map[int]float32 {
	t.Helper()
	var meta struct {
		Parameters struct {
			Classes []struct {
				Index, ID int
			} `json:"classes"`
		} `json:"parameters"`
	}
	getJSON(t, base+"/v2/models/"+serve.DefaultModelName, nil, &meta)
	var encoded []string
	for _, p := range images {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		encoded = append(encoded, base64.StdEncoding.EncodeToString(b))
	}
	req := map[string]any{"inputs": []map[string]any{{
		"name": "image", "datatype": "BYTES", "shape": []int{len(images)}, "data": encoded,
	}}}
	var resp struct {
		Outputs []struct {
			Name  string          `json:"name"`
			Shape []int           `json:"shape"`
			Data  json.RawMessage `json:"data"`
		} `json:"outputs"`
	}
	getJSON(t, base+"/v2/models/"+serve.DefaultModelName+"/infer", req, &resp)
	k := len(meta.Parameters.Classes)
	for _, o := range resp.Outputs {
		if o.Name != "distance" {
			continue
		}
		var data []float32
		if err := json.Unmarshal(o.Data, &data); err != nil {
			t.Fatalf("distance output: %v", err)
		}
		if len(data) != len(images)*k {
			t.Fatalf("distance output has %d values, want %d images x %d classes", len(data), len(images), k)
		}
		out := make([]map[int]float32, len(images))
		for i := range out {
			out[i] = map[int]float32{}
			for _, c := range meta.Parameters.Classes {
				out[i][c.ID] = data[i*k+c.Index]
			}
		}
		return out
	}
	t.Fatalf("no distance output in %+v", resp)
	return nil
}

func getJSON(t *testing.T, url string, body any, into any) {
	t.Helper()
	var resp *http.Response
	var err error
	if body == nil {
		resp, err = http.Get(url)
	} else {
		b, _ := json.Marshal(body)
		resp, err = http.Post(url, "application/json", bytes.NewReader(b))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s: %s", url, resp.Status, b)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

func revision(t *testing.T) string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
