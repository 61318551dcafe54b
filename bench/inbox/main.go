// Command inbox measures what `bicyc-infer serve --collect-unknown` collects
// during a stream with a new class: it starts the real server on a model
// directory, sends a seeded random stream of known-class images with a
// share of one new class's images to POST /v1/classify, stops the server
// and matches the inbox's files to the images sent by content hash
// (docs/serving.md, "Unknown images and new classes in production").
//
//	go run ./bench/inbox --model runs/k7/seed0/model --known runs/k7/seed0/data/test \
//	    --new runs/k7/seed0/unknown-test/Dress --scores vim,mahalanobis-probability-residual
//
// It prints one JSON line per score: images sent (known, new), files
// collected, the new-class share of them (precision), the share of the new
// class collected (recall) and the share of known images accepted.
package main

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Result is one score's inbox after one stream.
type Result struct {
	Model, Score, NewClass string
	Known, New             int     // images sent
	Collected              int     // files in the inbox
	CollectedNew           int     // of them, images of the new class
	Precision              float64 // CollectedNew / Collected
	Recall                 float64 // CollectedNew / New
	KnownAccepted          float64 // known images not collected / Known
	AnsweredUnknown        int     // answers with unknown true (the inbox should hold as many)
}

// image is one file of the stream.
type image struct {
	data  []byte
	isNew bool
}

func main() {
	bin := flag.String("bin", "bin/bicyc-infer", "the bicyc-infer binary")
	model := flag.String("model", "", "model directory")
	known := flag.String("known", "", "known-class test images, one folder per class")
	newDir := flag.String("new", "", "the new class's images, one folder")
	n := flag.Int("images", 4000, "images in the stream")
	share := flag.Float64("new-share", 0.05, "share of the stream from the new class")
	seed := flag.Uint64("seed", 1, "seed of the stream's draw and order")
	scores := flag.String("scores", "vim,mahalanobis-probability-residual", "unknown scores, comma-separated (--unknown-score of serve)")
	threshold := flag.Float64("threshold", 0, "serve's --threshold; 0: the model's calibrated one")
	addr := flag.String("addr", "127.0.0.1:18480", "address the server listens on")
	flag.Parse()
	if *model == "" || *known == "" || *newDir == "" {
		log.Fatal("inbox: --model, --known and --new are required")
	}
	stream, err := drawStream(*known, *newDir, *n, *share, *seed)
	if err != nil {
		log.Fatalf("inbox: %v", err)
	}
	for _, score := range strings.Split(*scores, ",") {
		r, err := measure(*bin, *model, *addr, score, *threshold, stream)
		if err != nil {
			log.Fatalf("inbox: %s: %v", score, err)
		}
		r.NewClass = filepath.Base(*newDir)
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
}

// drawStream draws round(n x share) images of the new class and the rest
// from the known classes (all folders pooled), without repeats, and
// shuffles them, all from seed.
func drawStream(knownDir, newDir string, n int, share float64, seed uint64) ([]image, error) {
	knownFiles, err := filepath.Glob(filepath.Join(knownDir, "*", "*"))
	if err != nil {
		return nil, err
	}
	newFiles, err := filepath.Glob(filepath.Join(newDir, "*"))
	if err != nil {
		return nil, err
	}
	nNew := int(float64(n)*share + 0.5)
	if nNew > len(newFiles) || n-nNew > len(knownFiles) {
		return nil, fmt.Errorf("%d new and %d known images asked, %s has %d and %s %d",
			nNew, n-nNew, newDir, len(newFiles), knownDir, len(knownFiles))
	}
	slices.Sort(knownFiles)
	slices.Sort(newFiles)
	rng := rand.New(rand.NewPCG(seed, 0x1b0c))
	rng.Shuffle(len(knownFiles), func(i, j int) { knownFiles[i], knownFiles[j] = knownFiles[j], knownFiles[i] })
	rng.Shuffle(len(newFiles), func(i, j int) { newFiles[i], newFiles[j] = newFiles[j], newFiles[i] })
	stream := make([]image, 0, n)
	for i, f := range append(newFiles[:nNew:nNew], knownFiles[:n-nNew]...) {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		stream = append(stream, image{data: b, isNew: i < nNew})
	}
	rng.Shuffle(len(stream), func(i, j int) { stream[i], stream[j] = stream[j], stream[i] })
	return stream, nil
}

// count matches the inbox's files to the stream by content hash.
func count(inbox string, stream []image, r *Result) error {
	isNew := map[[32]byte]bool{}
	for _, im := range stream {
		h := sha256.Sum256(im.data)
		isNew[h] = isNew[h] || im.isNew
		if im.isNew {
			r.New++
		} else {
			r.Known++
		}
	}
	entries, err := os.ReadDir(inbox)
	if err != nil {
		return err
	}
	collectedKnown := 0
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(inbox, e.Name()))
		if err != nil {
			return err
		}
		nw, sent := isNew[sha256.Sum256(b)]
		switch {
		case !sent:
			return fmt.Errorf("%s: a file in the inbox that was not sent", e.Name())
		case nw:
			r.CollectedNew++
		default:
			collectedKnown++
		}
		r.Collected++
	}
	if r.Collected > 0 {
		r.Precision = float64(r.CollectedNew) / float64(r.Collected)
	}
	r.Recall = float64(r.CollectedNew) / float64(r.New)
	r.KnownAccepted = 1 - float64(collectedKnown)/float64(r.Known)
	return nil
}
