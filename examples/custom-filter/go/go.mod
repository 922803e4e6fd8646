module github.com/sluicehq/sluice/examples/custom-filter/go

go 1.24

require github.com/sluicehq/sluice/sdk/go v0.0.0

replace github.com/sluicehq/sluice/sdk/go => ../../../sdk/go
