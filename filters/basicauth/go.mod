module github.com/sluicehq/sluice/filters/basicauth

go 1.26.0

require (
	github.com/sluicehq/sluice/sdk/go v0.0.0
	golang.org/x/crypto v0.59.0
)

replace github.com/sluicehq/sluice/sdk/go => ../../sdk/go
