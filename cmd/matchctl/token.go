package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// tokenFlags registers --token and --token-file on fs. The token is a
// secret: a command line is visible to every user of the machine (ps,
// /proc), so prefer --token-file or $MATCHGRAIN_ADMIN_TOKEN; --token stays
// for throwaway tokens.
func tokenFlags(fs *flag.FlagSet, token *string) (file *string) {
	fs.StringVar(token, "token", os.Getenv("MATCHGRAIN_ADMIN_TOKEN"), "admin bearer token (default $MATCHGRAIN_ADMIN_TOKEN); visible in the process list, prefer --token-file")
	return fs.String("token-file", os.Getenv("MATCHGRAIN_ADMIN_TOKEN_FILE"), "file holding the admin bearer token (default $MATCHGRAIN_ADMIN_TOKEN_FILE)")
}

// resolveToken reads the token file, if one was named, into token.
func resolveToken(token *string, file string) error {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("%w: --token-file: %v", errUsage, err)
		}
		*token = strings.TrimSpace(string(b))
	}
	if *token == "" {
		return fmt.Errorf("%w: the admin token is required (--token-file, $MATCHGRAIN_ADMIN_TOKEN or --token)", errUsage)
	}
	return nil
}
