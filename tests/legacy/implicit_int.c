/* Implicit int (C89): a function and a variable declared without a type. */
static counter;
twice(int x) { return 2 * x; }
int main(void) {
    counter = twice(21);
    return counter == 42 ? 0 : 1;
}
