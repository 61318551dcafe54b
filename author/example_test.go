package author_test

import (
	"context"
	"fmt"
	"image/png"
	"log"
	"os"
	"path/filepath"

	"github.com/bicyc/bicyc/author"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/testmodel"
)

// exampleModel builds the tests' one-task model (five Fashion-MNIST
// classes) under dir and writes six images each of Sandal and Bag as PNG
// files in class folders, returning the model and the folders.
func exampleModel(dir string) (model, folders string) {
	if _, err := infer.InitRuntime(""); err != nil {
		log.Fatal(err)
	}
	m, err := testmodel.Build(dir)
	if err != nil {
		log.Fatal(err)
	}
	folders = filepath.Join(dir, "new-classes")
	for _, y := range []int{5, 8} {
		class := filepath.Join(folders, data.FashionMNISTClasses[y])
		if err := os.MkdirAll(class, 0o755); err != nil {
			log.Fatal(err)
		}
		for n, i := 0, 0; n < 6; i++ {
			if int(m.Test.Labels[i]) != y {
				continue
			}
			f, err := os.Create(filepath.Join(class, fmt.Sprintf("%05d.png", i)))
			if err != nil {
				log.Fatal(err)
			}
			if err := png.Encode(f, testmodel.Image(m.Test, i)); err != nil {
				log.Fatal(err)
			}
			f.Close()
			n++
		}
	}
	return m.OneTask, folders
}

// Add two classes to a model from six images each, without retraining:
// the new version goes into a new directory, which infer opens as any
// other.
func ExampleAddClasses() {
	dir, err := os.MkdirTemp("", "author-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	model, folders := exampleModel(dir)

	classes, _, err := author.ReadClassFolders(folders)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	added, err := author.AddClasses(ctx, model, filepath.Join(dir, "model-v2"), classes, infer.WithProvider(infer.ProviderCPU))
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range added.Classes {
		fmt.Printf("class %d %s, task %d, from %d images\n", c.ID, c.Name, c.Task, c.AddedImages)
	}
	c, err := infer.Open(ctx, added.Dir, infer.WithProvider(infer.ProviderCPU))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println(len(c.Classes()), "classes")
	// Output:
	// class 5 Bag, task 2, from 6 images
	// class 6 Sandal, task 2, from 6 images
	// 7 classes
}
