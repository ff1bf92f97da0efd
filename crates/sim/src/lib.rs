//! The trace-driven NUMA machine simulator and its mapping policies, SAMMU included.
