package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// healthTimeout bounds `agnogo health`: a container health check must end.
const healthTimeout = 5 * time.Second

// healthCommand asks a running server whether it is up: the container
// health check of the Dockerfile (a distroless image has no curl).
func (c *cli) healthCommand() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check that a running agnogo server answers /health",
		Long: `Health asks the agnogo server at --addr for GET /health and exits 0 when it
answers {"status":"ok"}, 1 otherwise (no answer within 5 s, another status).`,
		Example: `  agnogo health
  agnogo health --addr 127.0.0.1:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return usagef("--addr %q: want HOST:PORT, such as 127.0.0.1:7777", addr)
			}
			return checkHealth(cmd.Context(), cmd.OutOrStdout(), "http://"+addr+"/health")
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:7777", "the server's address, HOST:PORT")
	return cmd
}

// checkHealth gets url and reports whether it says the server is ok.
func checkHealth(ctx context.Context, out io.Writer, url string) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body); err != nil || resp.StatusCode != http.StatusOK || body.Status != "ok" {
		return fmt.Errorf("health: %s answered %s, status %q", url, resp.Status, body.Status)
	}
	_, err = fmt.Fprintln(out, "ok")
	return err
}
