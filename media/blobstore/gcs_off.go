//go:build !agnogo_gcs

package blobstore

func init() { register("gs", notBuiltIn("gs", "agnogo_gcs")) }
