package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/urlpolicy"
)

func TestMediaURLPolicy(t *testing.T) {
	t.Parallel()
	f := mustParse(t, "block_private_media_urls: true\nmedia_url_allow: [\"*.example.com\", 10.9.0.0/16]\nmedia_url_deny: [evil.example.com]\n", nil)
	require.Equal(t, &urlpolicy.Policy{BlockPrivate: true, Allow: []string{"*.example.com", "10.9.0.0/16"}, Deny: []string{"evil.example.com"}},
		f.MediaURLPolicy())
	require.Nil(t, mustParse(t, "name: x\n", nil).MediaURLPolicy(), "no keys, no policy")

	_, err := parse([]byte("media_url_deny: [\"http://x/\"]\n"), "agnogo.yaml", env(nil))
	require.ErrorContains(t, err, `agnogo.yaml:1: media_url_deny: "http://x/" is not a host name, *.domain, IP address or CIDR`)
}
