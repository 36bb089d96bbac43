package localproc

import (
	"fmt"
	"net"
	"strconv"
)

// FreePort returns a loopback TCP port that was free a moment ago. Another
// process may take it before the server binds it, so callers retry a start
// that fails with "address already in use".
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreeLoopbackAddr returns a 127.0.0.1 address ("127.0.0.1:port") whose
// port was free a moment ago (see FreePort).
func FreeLoopbackAddr() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}
