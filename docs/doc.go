// Package docs reads the repository's Markdown documentation for the tests
// that keep it true: the shell commands of its ```sh blocks (ShellCommands,
// Fields), its links (Links) and the anchors its headings make (Anchors).
//
// The pages themselves are the .md files in this folder; README.md at the
// repository root is short and points into them. The tests check that no
// link is broken and that every command the README ever showed is still
// shown in the README or a page (testdata/readme-commands.txt); the tests
// of cmd/bicyc and cmd/bicyc-infer parse every documented command with the
// real command tree.
//
// May import: nothing of bicyc; its tests read the repository.
package docs
