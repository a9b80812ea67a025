//go:build !agnogo_gcs && !agnogo_azure

package blobstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/media"
	_ "github.com/agnogo/agnogo/media/blobstore"
)

// A default build has no Google Cloud or Azure driver: their URLs are
// refused with the build tag that brings them, not as an unknown scheme.
func TestCloudDriversLeftOutNameTheirBuildTag(t *testing.T) {
	for scheme, tag := range map[string]string{"gs": "agnogo_gcs", "azblob": "agnogo_azure"} {
		_, err := media.Open(t.Context(), scheme+"://bucket")
		require.Error(t, err, scheme)
		require.Contains(t, err.Error(), "-tags "+tag, scheme)
	}
}
