// Package bench compares agnogo's agent runtime with peer Go agent frameworks
// (cloudwego/eino and firebase/genkit) on the same four workloads. It is a
// separate module so the main module never depends on the peers; everything
// lives in the _test.go files. See README.md.
package bench
