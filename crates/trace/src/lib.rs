//! The versioned tdmap trace format: memory-access events and page-fault samples,
//! with a streaming reader, a multi-threaded writer and an invariant checker.
//! Every detector writes it; the analyser, the mapper and the simulator read it.
