package infer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
)

// exampleModel returns a model directory exported by bicyc (here the
// tests' small Fashion-MNIST model) and writes Fashion-MNIST test image i
// as a PNG file, returning its path.
func exampleModel(i int) (modelDir, imagePath string) {
	dir, test, err := infer.BuildExampleBundle()
	if err != nil {
		log.Fatal(err)
	}
	img := &image.Gray{Pix: test.Image(i), Stride: test.Width, Rect: image.Rect(0, 0, test.Width, test.Height)}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		log.Fatal(err)
	}
	imagePath = filepath.Join(os.TempDir(), fmt.Sprintf("infer-example-%d.png", i))
	if err := os.WriteFile(imagePath, b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	return dir, imagePath
}

func ExampleOpen() {
	modelDir, _ := exampleModel(0)
	// The context bounds the opening: a TensorRT session may spend minutes
	// building its engines.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := infer.Open(ctx, modelDir, infer.WithProvider(infer.ProviderCPU), infer.WithTopK(2))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println(len(c.Classes()), "classes in", len(c.Manifest().Tasks), "tasks, top", c.TopK(), "on", c.Provider())
	// Output: 10 classes in 2 tasks, top 2 on cpu
}

func ExampleClassifier_ClassifyFile() {
	modelDir, imagePath := exampleModel(2) // a trouser
	defer os.Remove(imagePath)
	ctx := context.Background()
	c, err := infer.Open(ctx, modelDir, infer.WithProvider(infer.ProviderCPU))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.ClassifyFile(ctx, imagePath)
	if err != nil {
		log.Fatal(err)
	}
	for rank, p := range res.Predictions {
		fmt.Printf("%d. class %d %s (task %d)\n", rank+1, p.ClassID, p.Name, p.Task)
	}
	// Output:
	// 1. class 1 Trouser (task 1)
	// 2. class 6 Shirt (task 2)
	// 3. class 4 Coat (task 1)
}

func ExampleClassifier_Transport() {
	modelDir, _ := exampleModel(0)
	ctx := context.Background()
	c, err := infer.Open(ctx, modelDir, infer.WithProvider(infer.ProviderCPU))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Features of the previous task's backbone would come from that
	// model's Embed; any [N][S] rows work here.
	old := [][]float32{make([]float32, c.Manifest().FeatureDim)}
	moved, err := c.Transport(ctx, old)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(moved), "row of", len(moved[0]), "features")
	// Output: 1 row of 8 features
}

// A caller that gives up stops the classification: the request's context
// reaches ONNX Runtime, and the error says why the call stopped.
func ExampleClassifier_ClassifyBatch_cancelled() {
	modelDir, _ := exampleModel(0)
	c, err := infer.Open(context.Background(), modelDir, infer.WithProvider(infer.ProviderCPU))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client went away
	img := image.NewGray(image.Rect(0, 0, 28, 28))
	_, err = c.ClassifyBatch(ctx, []image.Image{img, img})
	fmt.Println(errors.Is(err, context.Canceled))
	// The Classifier stays usable.
	res, err := c.Classify(context.Background(), img)
	fmt.Println(len(res.Predictions), err)
	// Output:
	// true
	// 3 <nil>
}

// Errors about outside input wrap sentinels to branch on.
func ExampleClassifier_ClassifyReader() {
	modelDir, _ := exampleModel(0)
	c, err := infer.Open(context.Background(), modelDir, infer.WithProvider(infer.ProviderCPU))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, err = c.ClassifyReader(context.Background(), bytes.NewReader([]byte("not an image")))
	fmt.Println(errors.Is(err, imaging.ErrFormat))
	_, err = c.Classify(context.Background(), nil)
	fmt.Println(errors.Is(err, infer.ErrNilImage))
	_, err = infer.Open(context.Background(), modelDir, infer.WithAcceptRate(1.5))
	fmt.Println(errors.Is(err, infer.ErrInvalidOptions))
	// Output:
	// true
	// true
	// true
}
