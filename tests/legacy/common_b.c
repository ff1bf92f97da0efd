/* The other tentative definition of common_a.c's global. */
int shared_counter;
int bump(void) { return ++shared_counter; }
