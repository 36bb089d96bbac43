package remote

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// CheckToken reports a token that cannot travel in an Authorization
// header: empty, or with a space, control or non-ASCII character. The
// error names the byte, never the token.
func CheckToken(token string) error {
	if err := checkToken(token); err != nil {
		return fmt.Errorf("remote: token %w", err)
	}
	return nil
}

func checkToken(token string) error {
	if token == "" {
		return errors.New("is empty")
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("has a space, control or non-ASCII character at byte %d", i)
		}
	}
	return nil
}

// ReadTokenFile reads a token from path: the file's content without
// surrounding whitespace. Errors name the file, never the content.
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("remote: token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if err := checkToken(tok); err != nil {
		return "", fmt.Errorf("remote: token file %s: the token %w", path, err)
	}
	return tok, nil
}
