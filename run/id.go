package run

import (
	"crypto/rand"
	"fmt"
)

// newUUID returns a random (version 4) UUID in its canonical text form, the
// kind of id Agno gives messages and requirements.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms.
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
