/* a module whose source includes a.h */
int b(void);
