//go:build !agnogo_azure

package blobstore

func init() { register("azblob", notBuiltIn("azblob", "agnogo_azure")) }
