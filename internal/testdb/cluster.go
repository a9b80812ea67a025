package testdb

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Cluster is a PostgreSQL server of one test's own, started by
// [PrivatePostgres]: its data directory, socket and log live under the
// test's temporary directory and it listens on 127.0.0.1 at a port nobody
// else uses. A fault-injection test may stop, start and restart it at will
// without disturbing the shared server ([PostgresURL]) that other tests,
// perhaps running at the same time, depend on.
//
// Connections use trust authentication as the postgres role; the server
// runs with fsync off (a stopped server loses nothing a committed
// transaction wrote: only the machine crashing could).
type Cluster struct {
	bin  string // directory holding initdb and pg_ctl
	dir  string // holds data/, the socket and server.log
	port int
	// runAs is the OS user that runs initdb and the server: postgres when
	// this process is root (initdb refuses root), else "" for this user.
	runAs string
}

// PrivatePostgres initialises a new PostgreSQL cluster with the server
// binaries found on this machine (`pg_config --bindir`,
// /usr/lib/postgresql/*/bin, or initdb and pg_ctl on PATH) and starts it;
// it is stopped when the test ends. Run as root, the server runs as the
// postgres OS user. When the binaries are missing or the cluster cannot
// start, the test is skipped — or, when the CI environment variable is
// true, failed.
func PrivatePostgres(t testing.TB) *Cluster {
	t.Helper()
	bin, err := postgresBinDir()
	if err != nil {
		clusterUnavailable(t, err)
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
	}
	if c.dir, err = c.makeDir(t.TempDir()); err != nil {
		clusterUnavailable(t, err)
	}
	if out, err := c.pgCommand("initdb", "-D", c.dataDir(), "-U", "postgres", "--auth=trust", "--no-sync",
		"-E", "UTF8", "--no-locale").CombinedOutput(); err != nil {
		clusterUnavailable(t, fmt.Errorf("initdb: %w: %s", err, out))
	}
	// Registered after t.TempDir registered the directory's removal, so it
	// runs first; pg_ctl fails, harmlessly, on a server that is down.
	t.Cleanup(func() { _ = c.stop("immediate") })
	if err := c.configure(); err != nil {
		clusterUnavailable(t, err)
	}
	// A port taken between choosing it and binding it is chosen again.
	for try := 1; ; try++ {
		if c.port, err = freePort(); err != nil {
			clusterUnavailable(t, err)
		}
		if err = c.start(); err == nil || try == startTries {
			break
		}
	}
	if err != nil {
		clusterUnavailable(t, fmt.Errorf("%w\n%s", err, c.Log()))
	}
	return c
}

// startTries bounds the ports PrivatePostgres tries.
const startTries = 3

// URL is the connection URL of the cluster's postgres database, as the
// postgres role.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Stop stops the server at once (pg_ctl stop -m immediate), as a crash
// would: every connection is dropped, and the server recovers from its
// write-ahead log on the next [Cluster.Start]. Until then, connecting
// fails.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if err := c.stop("immediate"); err != nil {
		t.Fatalf("stop the private PostgreSQL cluster: %v\n%s", err, c.Log())
	}
}

// Start starts the stopped server again on the port it had, and returns
// once it accepts connections.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if err := c.start(); err != nil {
		t.Fatalf("start the private PostgreSQL cluster: %v\n%s", err, c.Log())
	}
}

// Restart restarts the server as an operator does (pg_ctl stop -m fast,
// then start): open sessions are terminated with SQLSTATE 57P01
// ("terminating connection due to administrator command"), and Restart
// returns once the server accepts connections again.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	if err := c.stop("fast"); err != nil {
		t.Fatalf("stop the private PostgreSQL cluster: %v\n%s", err, c.Log())
	}
	c.Start(t)
}

// Log is the server's log so far, for failure messages.
func (c *Cluster) Log() string {
	data, err := os.ReadFile(c.logFile())
	if err != nil {
		return fmt.Sprintf("(no server log: %v)", err)
	}
	return string(data)
}

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) logFile() string { return filepath.Join(c.dir, "server.log") }

// start starts the server and waits until it accepts connections.
func (c *Cluster) start() error {
	out, err := c.pgCommand("pg_ctl", "start", "-D", c.dataDir(), "-l", c.logFile(), "-w", "-t", "60",
		"-o", "-p "+strconv.Itoa(c.port)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl start on port %d: %w: %s", c.port, err, out)
	}
	return nil
}

// stop stops the server in the pg_ctl shutdown mode and waits until it
// is down.
func (c *Cluster) stop(mode string) error {
	out, err := c.pgCommand("pg_ctl", "stop", "-D", c.dataDir(), "-m", mode, "-w", "-t", "60").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %w: %s", mode, err, out)
	}
	return nil
}

// configure appends the cluster's settings to its postgresql.conf: the
// port comes with each start, the rest is fixed.
func (c *Cluster) configure() error {
	settings := fmt.Sprintf(`
# Set by testdb.PrivatePostgres.
listen_addresses = '127.0.0.1'
unix_socket_directories = %s
fsync = off
max_connections = 200
`, confQuote(c.dir))
	conf, err := os.OpenFile(filepath.Join(c.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("configure the cluster: %w", err)
	}
	if _, err := conf.WriteString(settings); err != nil {
		_ = conf.Close()
		return fmt.Errorf("configure the cluster: %w", err)
	}
	return conf.Close()
}

// makeDir makes the directory that holds the cluster under base, owned by
// the user the server runs as. The server's user must be able to reach it:
// the test's temporary directory is private to this process's user, so it
// is opened to others for traversal (not listing).
func (c *Cluster) makeDir(base string) (string, error) {
	dir := filepath.Join(base, "pg")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("make the cluster directory: %w", err)
	}
	if c.runAs == "" {
		return dir, nil
	}
	account, err := user.Lookup(c.runAs)
	if err != nil {
		return "", fmt.Errorf("running as root, the server runs as the %s user: %w", c.runAs, err)
	}
	uid, errUID := strconv.Atoi(account.Uid)
	gid, errGID := strconv.Atoi(account.Gid)
	if err := cmp.Or(errUID, errGID); err != nil {
		return "", fmt.Errorf("user %s: %w", c.runAs, err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return "", fmt.Errorf("give the cluster directory to %s: %w", c.runAs, err)
	}
	for _, parent := range []string{base, filepath.Dir(base)} {
		info, err := os.Stat(parent)
		if err != nil {
			return "", err
		}
		if err := os.Chmod(parent, info.Mode().Perm()|0o111); err != nil {
			return "", fmt.Errorf("open %s to %s: %w", parent, c.runAs, err)
		}
	}
	return dir, nil
}

// pgCommand is the command that runs the PostgreSQL program name, from the
// cluster's binaries, as the cluster's user.
func (c *Cluster) pgCommand(name string, args ...string) *exec.Cmd {
	program := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	switch runuser, err := exec.LookPath("runuser"); {
	case c.runAs == "":
		cmd = exec.Command(program, args...)
	case err == nil:
		cmd = exec.Command(runuser, append([]string{"-u", c.runAs, "--", program}, args...)...)
	default:
		// su hands the arguments after the command to the shell, which
		// executes them as they are.
		cmd = exec.Command("su", append([]string{c.runAs, "-s", "/bin/sh", "-c", `exec "$0" "$@"`, program}, args...)...)
	}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// postgresBinDir finds a directory holding the PostgreSQL server programs
// initdb and pg_ctl.
func postgresBinDir() (string, error) {
	var candidates []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	installed, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(installed, func(a, b string) int { // the newest major version first
		return cmp.Compare(majorVersion(b), majorVersion(a))
	})
	candidates = append(candidates, installed...)
	if initdb, err := exec.LookPath("initdb"); err == nil {
		candidates = append(candidates, filepath.Dir(initdb))
	}
	for _, dir := range candidates {
		if executable(filepath.Join(dir, "initdb")) && executable(filepath.Join(dir, "pg_ctl")) {
			return dir, nil
		}
	}
	return "", errors.New("the PostgreSQL server programs initdb and pg_ctl were not found " +
		"(looked in `pg_config --bindir`, /usr/lib/postgresql/*/bin and PATH; install the postgresql package)")
}

// majorVersion is the version in a /usr/lib/postgresql/<version>/bin path.
func majorVersion(binDir string) float64 {
	version, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return version
}

// executable reports whether path is a regular file someone may execute.
func executable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}

// freePort picks a port on 127.0.0.1 that nothing listens on, below the
// ephemeral range: the kernel never hands it to an outgoing connection, so
// it is still free when a stopped cluster starts again.
func freePort() (int, error) {
	low := ephemeralLow()
	for range 100 {
		port := low - 1 - rand.IntN(min(low-1024, 10000))
		listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = listener.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port found below %d", low)
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	const fallback = 32768
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return fallback
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 2048 {
		return fallback
	}
	return low
}

// confQuote quotes a value for postgresql.conf.
func confQuote(value string) string {
	return "'" + strings.ReplaceAll(value, "'", "''") + "'"
}

// clusterUnavailable skips the test, or fails it in CI, saying why no
// private cluster could be started.
func clusterUnavailable(t testing.TB, err error) {
	t.Helper()
	if inCI() {
		t.Fatalf("private PostgreSQL cluster: %v; CI must run the fault-injection tests", err)
	}
	t.Skipf("SKIPPING: private PostgreSQL cluster: %v; these tests run in CI", err)
}
