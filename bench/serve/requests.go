package main

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/bicyc/bicyc/serve/oippb"
)

// encoder writes the requests of the protocol's paths for tensors of chw (channels, height, width).
type encoder struct{ chw [3]int }

func (e encoder) shape(n int) []int { return []int{n, e.chw[0], e.chw[1], e.chw[2]} }

var jsonHeader = http.Header{"Content-Type": {"application/json"}}

// jsonImages and jsonTensor are the protocol's JSON requests (images
// base64), binaryImages and binaryTensor Triton's binary tensor data
// (raw PNG bytes, little-endian float32) with the distances asked for
// as binary data too, as Triton's clients do by default.
func (e encoder) jsonImages(imgs [][]byte) request {
	b64 := make([]string, len(imgs))
	for i, b := range imgs {
		b64[i] = base64.StdEncoding.EncodeToString(b)
	}
	return request{mustJSON(map[string]any{"inputs": []any{map[string]any{
		"name": "image", "shape": []int{len(imgs)}, "datatype": "BYTES", "data": b64}}, "outputs": []any{map[string]any{"name": "distance"}}}), jsonHeader}
}

func (e encoder) jsonTensor(xs [][]float32) request {
	return request{mustJSON(map[string]any{"inputs": []any{map[string]any{
		"name": "input", "shape": e.shape(len(xs)), "datatype": "FP32", "data": slices.Concat(xs...)}}, "outputs": []any{map[string]any{"name": "distance"}}}), jsonHeader}
}

// framed is a binary-data request: the JSON header of input, then tail.
func framed(input map[string]any, tail []byte) request {
	input["parameters"] = map[string]any{"binary_data_size": len(tail)}
	head := mustJSON(map[string]any{"inputs": []any{input}, "outputs": []any{map[string]any{"name": "distance", "parameters": map[string]any{"binary_data": true}}}})
	return request{append(head, tail...), http.Header{"Content-Type": {"application/octet-stream"}, "Inference-Header-Content-Length": {strconv.Itoa(len(head))}}}
}

func (e encoder) binaryImages(imgs [][]byte) request {
	return framed(map[string]any{"name": "image", "shape": []int{len(imgs)}, "datatype": "BYTES"}, lengthPrefixed(imgs))
}

func (e encoder) binaryTensor(xs [][]float32) request {
	return framed(map[string]any{"name": "input", "shape": e.shape(len(xs)), "datatype": "FP32"}, littleEndian(xs))
}

// lengthPrefixed is the protocol's binary layout of a BYTES tensor: each element's length (uint32,
// little-endian), then its bytes.
func lengthPrefixed(imgs [][]byte) []byte {
	var raw []byte
	for _, b := range imgs {
		raw = binary.LittleEndian.AppendUint32(raw, uint32(len(b)))
		raw = append(raw, b...)
	}
	return raw
}

// littleEndian is the binary layout of an FP32 tensor.
func littleEndian(xs [][]float32) []byte {
	var raw []byte
	for _, x := range slices.Concat(xs...) {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
	}
	return raw
}

// distance asks for the distances as the output.
var distance = []*oippb.ModelInferRequest_InferRequestedOutputTensor{{Name: "distance"}}

// grpcImages and grpcTensor are ModelInfer messages with the tensor in
// raw_input_contents, laid out as the binary data above.
func (e encoder) grpcImages(imgs [][]byte) *oippb.ModelInferRequest {
	return &oippb.ModelInferRequest{ModelName: "m", Outputs: distance, RawInputContents: [][]byte{lengthPrefixed(imgs)},
		Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "BYTES", Shape: []int64{int64(len(imgs))}}}}
}

func (e encoder) grpcTensor(xs [][]float32) *oippb.ModelInferRequest {
	dims := e.shape(len(xs))
	return &oippb.ModelInferRequest{ModelName: "m", Outputs: distance, RawInputContents: [][]byte{littleEndian(xs)},
		Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{int64(dims[0]), int64(dims[1]), int64(dims[2]), int64(dims[3])}}}}
}
