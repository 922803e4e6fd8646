package config

// The docs helpers, for the external test that validates every config of
// every Markdown file (docs_validate_test.go): it builds them with
// host/generation, which this package's own tests cannot import.
var (
	RepoRoot      = repoRoot
	MarkdownFiles = markdownFiles
	HCLBlocks     = hclBlocks
	WithSite      = withSite
)

func (b mdBlock) File() string { return b.file }
func (b mdBlock) Line() int    { return b.line }
func (b mdBlock) Info() string { return b.info }
func (b mdBlock) Src() []byte  { return b.src }
