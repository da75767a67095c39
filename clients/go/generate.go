package client

// The generated code (gen/, not committed) comes from proto/ with buf.gen.yaml: buf and the Go
// toolchain are all it needs, offline.
//go:generate buf generate
