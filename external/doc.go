// Package external holds the machinery shared by external coding agents:
// one turn per session at a time, retries with error classification, media
// staging, transcript mirroring into storage, and history seeding.
package external
