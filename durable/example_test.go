package durable_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/bicyc/bicyc/durable"
)

// A directory is rebuilt beside itself and swapped in whole, so a reader
// (or a crash) sees either the old tree or the new one.
func ExampleReplaceDir() {
	parent, err := os.MkdirTemp("", "durable-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(parent)
	dir := filepath.Join(parent, "model")
	hasManifest := func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "manifest.json"))
		return err == nil
	}
	for _, version := range []string{"v1", "v2"} {
		if err := durable.Recover(dir, hasManifest); err != nil {
			log.Fatal(err)
		}
		tmp, err := durable.NewDir(dir)
		if err != nil {
			log.Fatal(err)
		}
		if err := durable.WriteFile(filepath.Join(tmp, "manifest.json"), []byte(version)); err != nil {
			log.Fatal(err)
		}
		if err := durable.ReplaceDir(tmp, dir); err != nil {
			log.Fatal(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	entries, _ := os.ReadDir(parent)
	fmt.Println(string(b), len(entries))
	// Output: v2 1
}
