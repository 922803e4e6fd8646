// The package's entry point: asc 0.28 resolves `import … from
// "@sluicehq/sluice-assemblyscript"` to this file, not to package.json's
// ascMain. Everything is in assembly/index.ts.
export * from "./assembly/index";
