// Package tlsconf chooses and keeps the TLS side of a listener: the
// certificate for each server name (SNI) across sites, aliases and
// wildcards (chosen by host/internal/hostname's rule, the one route
// picks a site by from Host), a default certificate for clients that
// send no or an unknown name, certificate files reloaded when they change on disk,
// ACME certificates obtained and renewed on their own, client
// certificates (mutual TLS), and session tickets under rotated keys.
//
// On the request path it sits between the listening socket and the
// engines: a listener's tls.Config asks Table.GetConfigForClient for the
// site's settings during the handshake, and the host asks Table.Lookup
// per request for the site's HSTS value and client-certificate policy.
// Nothing here is read from a config file on a handshake; a Table is
// built once per config load (generation) and is immutable but for the
// certificates it reloads.
//
// tlsconf imports no config (the host translates config.TLS into Site
// values); what it imports is drawn in host/README.md.
package tlsconf
