// Package httpbound bounds what an HTTP/1 server gives each client: the time
// a request body may take to arrive, and the connections open at once.
// agentos.OS.Serve (which `agnogo serve` calls) puts [Handler] around the
// AgentOS handler and serves on a [LimitListener].
//
// # Request bodies
//
// A client that sends its headers and then its body slowly — a byte every few
// seconds, or fewer bytes than its Content-Length promised — would otherwise
// hold a handler, a goroutine and a connection for as long as it likes.
// http.Server.ReadTimeout gives every request one fixed time for its headers
// and body together: long enough for a large upload, it is long enough for a
// slow client too. (WriteTimeout is no help either: it bounds the whole
// response, and would end a long Server-Sent Events stream.)
//
// [Handler] instead gives each body its own read deadline, set with
// http.ResponseController.SetReadDeadline when the handler is called:
//
//   - an ordinary body must arrive within [Config.BodyTimeout];
//   - a multipart/form-data body (an upload) gets the same time plus one second
//     for every [Config.UploadMinRate] bytes it has delivered: its deadline is
//     start + BodyTimeout + received/UploadMinRate, moved forward as bytes
//     arrive. An upload at least UploadMinRate bytes per second fast is never
//     cut off, however large; a slower one falls behind its deadline, and a
//     trickle earns next to nothing.
//
// Past the deadline the body's Read returns an error wrapping
// [ErrBodyTimeout] that says how much arrived, so the handler answers as it
// does for any unreadable body (AgentOS: 400 with that detail), and the
// server closes the connection after the answer, gracefully: it ends its
// side first, so that the client can read the answer.
//
// The deadline never bounds the response, however long — a run's stream:
// once the body has ended the server clears the connection's read deadline
// (before it reads the connection in the background to notice a client
// that leaves), and a read deadline does not apply to writes. A body the
// handler leaves unread the server reads itself when the response starts
// (at most 256 KiB, still under the deadline) so that the connection can
// serve the next request, or it closes the connection.
//
// # Connections
//
// [LimitListener] caps the connections open at once: past the cap, Accept
// waits until one closes, and new clients wait in the kernel's accept queue
// (refused once it is full). Idle keep-alive connections count until the
// server's IdleTimeout closes them.
package httpbound
