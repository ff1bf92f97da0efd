/* Implicit function declaration: `half` is called before any declaration. */
int main(void) {
    return half(8) == 4 ? 0 : 1;
}
int half(int x) { return x / 2; }
