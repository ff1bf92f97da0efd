/* Tentative definitions of the same global in two files (common_b.c): links only with
   -fcommon, the default before gcc 10 and clang 11. */
int shared_counter;
int bump(void);
int main(void) {
    shared_counter = 41;
    return bump() == 42 ? 0 : 1;
}
