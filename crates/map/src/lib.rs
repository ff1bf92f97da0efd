//! Thread-mapping algorithms, data-mapping rules and the cost of a mapping. Pure: no I/O.
