package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bicyc/bicyc/serve"
)

// TestServeMemoryCeiling runs the real server with small limits (two
// slots, 2 MiB bodies, 8 MiB of them in memory, 1 Mpx images) and sends
// it the worst request shapes its limits let through, four at once (two
// classified, two waiting for a slot with their bodies): base64 PNGs and 1x1 GIFs
// filling a body (thousands of images in one request), an FP32 tensor of
// zeros filling a body (the most values per byte), and two images of the
// largest size. Each shape's peak resident set (VmHWM, reset between
// shapes through /proc/PID/clear_refs) must stay under the ceiling the
// server documents for its limits (serve.Config.MemoryCeiling); every
// answer is 200, or 413 naming the limit. After the burst the resident
// set must fall back under twice the idle server's (it stayed at 999 MiB,
// ONNX Runtime's memory for the largest batch, before batches ran in runs
// of at most infer.RunBatch images).
func TestServeMemoryCeiling(t *testing.T) {
	model, d := testModel(t)
	bin := buildBinary(t)
	const maxBody, maxPixels = 2 << 20, 1 << 20
	cfg := serve.Config{MaxBody: maxBody, MaxBuffered: 4 * maxBody, MaxConcurrent: 2, MaxPixels: maxPixels}
	ceiling := cfg.MemoryCeiling()
	srv := startServer(t, bin, model, "--max-concurrent", "2", "--max-body", strconv.Itoa(maxBody),
		"--max-buffered", strconv.Itoa(4*maxBody), "--max-pixels", strconv.Itoa(maxPixels), "--queue-timeout", "60s")
	pid := srv.cmd.Process.Pid
	idle := residentSet(pid)
	defer func() {
		srv.cmd.Process.Kill()
		srv.cmd.Wait()
	}()
	small := encodePNG(t, fashionImage(d, 0))
	var tinyGIF bytes.Buffer
	gray := image.NewPaletted(image.Rect(0, 0, 1, 1), color.Palette{color.Gray{128}})
	if err := gif.Encode(&tinyGIF, gray, nil); err != nil {
		t.Fatal(err)
	}
	bigPNG := bytes.NewBuffer(bigPNG16(t))
	shapes := []struct {
		name string
		body []byte
	}{
		{"BYTES of small PNGs", imagesBody(small, maxBody)},
		{"BYTES of 1x1 GIFs", imagesBody(tinyGIF.Bytes(), maxBody)},
		{"BYTES [2] of 1 Mpx 16-bit PNGs", imagesBody(bigPNG.Bytes(), 2*(len(bigPNG.Bytes())*4/3+8)+200)},
		{"FP32 [N,1,28,28] of zeros", zerosBody(maxBody)},
	}
	url := srv.url + "/v2/models/bicyc/infer"
	client := &http.Client{Timeout: 5 * time.Minute}
	for _, shape := range shapes {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			t.Fatalf("resetting the peak resident set: %v", err)
		}
		start := time.Now()
		answers := postConcurrently(client, url, shape.body, 4)
		peak := peakRSS(pid)
		t.Logf("%s (%d KiB): peak RSS %d MiB (ceiling %d MiB) in %v; answers %q", shape.name, len(shape.body)>>10,
			peak>>20, ceiling>>20, time.Since(start).Round(time.Millisecond), answers)
		for _, a := range answers {
			if !strings.HasPrefix(a, "200 ") && !(strings.HasPrefix(a, "413 ") && strings.Contains(a, "limit")) {
				t.Errorf("%s: answer %s, want 200 or 413 naming the limit", shape.name, a)
			}
		}
		if peak > ceiling {
			t.Errorf("%s: peak RSS %d MiB, over the ceiling of %d MiB", shape.name, peak>>20, ceiling>>20)
		}
	}
	time.Sleep(2 * time.Second)
	after := residentSet(pid)
	t.Logf("resident set 2 s after the burst: %d MiB (%d MiB idle before it)", after>>20, idle>>20)
	if after > 2*idle {
		t.Errorf("resident set %d MiB after the burst, want it handed back under twice the idle server's %d MiB", after>>20, idle>>20)
	}
}

// bigPNG16 is a 1024x1024 16-bit RGB gradient as a PNG: 1 Mpx that
// decodes to 8 MiB.
func bigPNG16(t *testing.T) []byte {
	big := image.NewNRGBA64(image.Rect(0, 0, 1024, 1024))
	for y := range 1024 {
		for x := range 1024 {
			big.SetNRGBA64(x, y, color.NRGBA64{uint16(x * 64), uint16(y * 64), uint16((x + y) * 32), 0xffff})
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, big); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// postConcurrently posts body as JSON to url n times at once and returns
// each answer as "status body" (the body cut at 200 bytes) or the error.
func postConcurrently(client *http.Client, url string, body []byte, n int) []string {
	var wg sync.WaitGroup
	answers := make([]string, n)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				answers[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			answers[i] = fmt.Sprintf("%d %.200s", resp.StatusCode, b)
		}()
	}
	wg.Wait()
	return answers
}

// imagesBody is an inference request whose BYTES tensor repeats encoded
// (base64) as often as a body of limit bytes holds.
func imagesBody(encoded []byte, limit int) []byte {
	item := strconv.Quote(base64.StdEncoding.EncodeToString(encoded))
	n := (limit - 200) / (len(item) + 1)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"inputs":[{"name":"image","datatype":"BYTES","shape":[%d],"data":[`, n)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item)
	}
	b.WriteString(`]}]}`)
	return b.Bytes()
}

// zerosBody is an inference request of an FP32 tensor [N,1,28,28] of
// zeros, as many images as a body of limit bytes holds.
func zerosBody(limit int) []byte {
	n := (limit - 200) / (2 * 28 * 28)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"inputs":[{"name":"input","datatype":"FP32","shape":[%d,1,28,28],"data":[0`, n)
	b.WriteString(strings.Repeat(",0", n*28*28-1))
	b.WriteString(`]}]}`)
	return b.Bytes()
}

// residentSet returns a process's resident set now (VmRSS) from /proc.
func residentSet(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
