package static

import "strings"

// builtinTypes maps lower-case extensions to media types. It is embedded
// so that answers do not depend on the host's /etc/mime.types; text types
// get "; charset=utf-8" when the handler builds Content-Type.
var builtinTypes = map[string]string{
	// text and documents
	".html": "text/html", ".htm": "text/html", ".shtml": "text/html", ".xhtml": "application/xhtml+xml",
	".css": "text/css", ".csv": "text/csv", ".tsv": "text/tab-separated-values",
	".txt": "text/plain", ".text": "text/plain", ".log": "text/plain", ".md": "text/markdown", ".markdown": "text/markdown",
	".ics": "text/calendar", ".vtt": "text/vtt", ".srt": "text/plain", ".yaml": "application/yaml", ".yml": "application/yaml",
	".toml": "application/toml", ".xml": "application/xml", ".xsl": "application/xml", ".rss": "application/rss+xml",
	".atom": "application/atom+xml", ".json": "application/json", ".jsonld": "application/ld+json", ".map": "application/json",
	".geojson": "application/geo+json", ".webmanifest": "application/manifest+json", ".pdf": "application/pdf",
	".rtf": "application/rtf", ".epub": "application/epub+zip",
	".doc": "application/msword", ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".xls": "application/vnd.ms-excel", ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".ppt": "application/vnd.ms-powerpoint", ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	".odt": "application/vnd.oasis.opendocument.text", ".ods": "application/vnd.oasis.opendocument.spreadsheet",
	// code
	".js": "text/javascript", ".mjs": "text/javascript", ".cjs": "text/javascript", ".jsx": "text/javascript",
	".ts":   "text/plain", // TypeScript far more often than MPEG-TS on a web server
	".wasm": "application/wasm",
	// images
	".png": "image/png", ".apng": "image/apng", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".jfif": "image/jpeg",
	".gif": "image/gif", ".webp": "image/webp", ".avif": "image/avif", ".svg": "image/svg+xml", ".svgz": "image/svg+xml",
	".ico": "image/x-icon", ".cur": "image/x-icon", ".bmp": "image/bmp", ".tif": "image/tiff", ".tiff": "image/tiff",
	".heic": "image/heic", ".heif": "image/heif", ".jxl": "image/jxl",
	// fonts
	".woff": "font/woff", ".woff2": "font/woff2", ".ttf": "font/ttf", ".otf": "font/otf", ".eot": "application/vnd.ms-fontobject",
	// audio and video
	".mp3": "audio/mpeg", ".m4a": "audio/mp4", ".aac": "audio/aac", ".ogg": "audio/ogg", ".oga": "audio/ogg", ".opus": "audio/ogg",
	".wav": "audio/wav", ".flac": "audio/flac", ".weba": "audio/webm", ".mid": "audio/midi", ".midi": "audio/midi",
	".mp4": "video/mp4", ".m4v": "video/mp4", ".webm": "video/webm", ".ogv": "video/ogg", ".mov": "video/quicktime",
	".avi": "video/x-msvideo", ".mkv": "video/x-matroska", ".mpeg": "video/mpeg", ".mpg": "video/mpeg",
	".m3u8": "application/vnd.apple.mpegurl", ".mpd": "application/dash+xml",
	// archives and binaries
	".zip": "application/zip", ".gz": "application/gzip", ".tgz": "application/gzip", ".tar": "application/x-tar",
	".bz2": "application/x-bzip2", ".xz": "application/x-xz", ".zst": "application/zstd", ".br": "application/octet-stream",
	".7z": "application/x-7z-compressed", ".rar": "application/vnd.rar", ".jar": "application/java-archive",
	".apk": "application/vnd.android.package-archive", ".dmg": "application/x-apple-diskimage",
	".deb": "application/vnd.debian.binary-package", ".rpm": "application/x-rpm", ".iso": "application/x-iso9660-image",
	".exe": "application/octet-stream", ".bin": "application/octet-stream", ".msi": "application/x-msdownload",
	".swf": "application/x-shockwave-flash", ".glb": "model/gltf-binary", ".gltf": "model/gltf+json",
	".ps": "application/postscript", ".sh": "text/plain", ".py": "text/plain", ".go": "text/plain",
}

// defaultType is sent for files whose extension is unknown; the handler
// never sniffs content.
const defaultType = "application/octet-stream"

// contentType returns the Content-Type for a file name: the media type
// from overrides or the built-in table, with "; charset=utf-8" added to
// textual types that carry no parameters.
func contentType(name string, overrides map[string]string) string {
	ext := ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 && strings.IndexByte(name[i:], '/') < 0 {
		ext = strings.ToLower(name[i:])
	}
	t, ok := overrides[ext]
	if !ok {
		if t, ok = builtinTypes[ext]; !ok {
			t = defaultType
		}
	}
	if !strings.Contains(t, ";") && isTextual(t) {
		t += "; charset=utf-8"
	}
	return t
}

// isTextual reports whether a media type is text that a charset applies to.
func isTextual(t string) bool {
	switch {
	case strings.HasPrefix(t, "text/"):
		return true
	case t == "application/json", t == "application/xml", t == "application/xhtml+xml",
		t == "application/manifest+json", t == "application/ld+json", t == "application/geo+json",
		t == "application/rss+xml", t == "application/atom+xml", t == "application/yaml", t == "application/toml":
		return true
	}
	return false
}

// mediaType is a Content-Type without its parameters, lower case.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.ToLower(strings.TrimSpace(ct))
}

// matchType reports whether media type t matches one of patterns, where
// "text/*" matches every text type and "*/*" everything.
func matchType(t string, patterns []string) bool {
	for _, p := range patterns {
		p = strings.ToLower(p)
		if p == t || p == "*/*" || p == "*" {
			return true
		}
		if strings.HasSuffix(p, "/*") && strings.HasPrefix(t, p[:len(p)-1]) {
			return true
		}
	}
	return false
}

// defaultCompressTypes are the media types compressed on the fly when
// Options.CompressTypes is empty: text and the textual or uncompressed
// binary formats that shrink well.
var defaultCompressTypes = []string{
	"text/*",
	"application/javascript", "application/json", "application/xml", "application/xhtml+xml",
	"application/manifest+json", "application/ld+json", "application/geo+json",
	"application/rss+xml", "application/atom+xml", "application/yaml", "application/toml",
	"application/wasm", "application/vnd.ms-fontobject", "image/svg+xml", "image/x-icon", "image/bmp",
	"font/ttf", "font/otf", "model/gltf+json",
}
