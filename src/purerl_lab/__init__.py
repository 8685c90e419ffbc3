"""The lab beside the library: purerl's case studies (`studies/`), the pipeline that publishes their results
(`publish/`) and the benchmarks against peers (`bench/`). It depends on the library (`purerl`) only through its
public API; the library never imports it. Its commands join `purerl`'s command line through the `purerl.commands`
entry point (`cli/`)."""
