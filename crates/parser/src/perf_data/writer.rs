//! perf.data (PERFILE2) writer, used by the collector and the scheduling simulator.
