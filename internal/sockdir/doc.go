// Package sockdir holds the rules that the directory of the agent's unix
// socket must meet, so that nobody but the agent's user can listen in its
// place or reach it. The agent checks them before it listens (Prepare) and
// the client before each connection (Check): a client that connected to a
// socket another user planted would hand that user its manifests, secret
// env values included.
//
// The rule of a directory follows from its path (RuleFor):
//
//	$XDG_RUNTIME_DIR/podward, $TMPDIR/podward-<uid>   Private: the calling user's own, mode 0700,
//	                                                  a real directory (ssh-agent's and the XDG
//	                                                  base directory spec's rules)
//	/run/podward                                      RootOwned: root's, writable by root only
//	                                                  (0755, so that the socket's group reaches it)
//	any other directory (--socket, $PODWARD_SOCKET)   Unchecked: the user chose it
//
// The per-user directory under /tmp is the one another user can create
// first: /tmp is writable by all. Its parent is trusted as it is: /tmp is
// sticky, so nobody else can rename or remove the user's directory, and the
// XDG spec makes $XDG_RUNTIME_DIR the user's own 0700 directory.
//
// It imports only the standard library: the client (which imports nothing
// else of podward) and the API server both use it.
package sockdir
