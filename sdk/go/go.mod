module github.com/sluicehq/sluice/sdk/go

go 1.24
