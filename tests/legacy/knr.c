/* K&R (old-style) definitions and an unprototyped declaration. */
int add();
int add(a, b)
int a;
int b;
{
    return a + b;
}
int main() { return add(2, 3) == 5 ? 0 : 1; }
