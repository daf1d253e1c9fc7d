-- A policy's currency (ISO 4217): its limits of money are values in it, its totals sums of the
-- records' values. NULL: amounts of the asset as sent, what every policy meant before; existing
-- policies keep it (nothing is converted silently: docs/budgets.md, "Policies from before values").
ALTER TABLE policies ADD COLUMN currency TEXT;
