package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// measure starts the server with score and a fresh inbox, sends the
// stream one image per request, stops the server and counts the inbox.
func measure(bin, model, addr, score string, threshold float64, stream []image) (Result, error) {
	r := Result{Model: model, Score: score}
	inbox, err := os.MkdirTemp("", "bicyc-inbox-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(inbox)
	cmd := exec.Command(bin, "-m", model, "serve", "--addr", addr, "--admin-addr", "",
		"--grpc-addr", "", "--grpc-admin-addr", "", "--unknown-score", score,
		"--threshold", fmt.Sprint(threshold),
		"--collect-unknown", inbox, "--collect-max-files", fmt.Sprint(len(stream)+1))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return r, err
	}
	sendErr := send("http://"+addr, stream, &r)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return r, err
	}
	if err := cmd.Wait(); err != nil && sendErr == nil {
		sendErr = fmt.Errorf("server: %v", err)
	}
	if sendErr != nil {
		return r, sendErr
	}
	return r, count(inbox, stream, &r)
}

// send waits for /readyz, then posts every image to /v1/classify and
// counts the answers with unknown true.
func send(base string, stream []image, r *Result) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server not ready after 60 s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for i, im := range stream {
		resp, err := http.Post(base+"/v1/classify", "image/png", bytes.NewReader(im.data))
		if err != nil {
			return fmt.Errorf("image %d: %v", i, err)
		}
		var answer struct {
			Unknown bool   `json:"unknown"`
			Error   string `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("image %d: status %d, %q, %v", i, resp.StatusCode, answer.Error, err)
		}
		if answer.Unknown {
			r.AnsweredUnknown++
		}
	}
	return nil
}
